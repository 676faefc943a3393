# Executes one notebook headless and checks that at least one cell drew a figure:
#   cmake -DPYTHON=/usr/bin/python3 -DNOTEBOOK=02-error-feedback.ipynb -DOUTPUT_DIR=/tmp/nbout \
#         -P execute-notebook.cmake
# run from notebooks/ with PYTHONPATH (../python), MPLBACKEND=Agg and LEMMALAB_CLI in the
# environment (notebooks/CMakeLists.txt sets them for ctest). Under MPLBACKEND=Agg a figure
# becomes an output only through the inline backend, so every notebook starts with
# `%matplotlib inline`.
foreach(variable PYTHON NOTEBOOK OUTPUT_DIR)
  if(NOT DEFINED ${variable})
    message(FATAL_ERROR "execute-notebook.cmake: -D${variable}=... is required")
  endif()
endforeach()

execute_process(
  COMMAND ${PYTHON} -m nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300
          --output-dir ${OUTPUT_DIR} ${NOTEBOOK}
  RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "${NOTEBOOK}: nbconvert --execute failed (${result}); the failing cell "
                      "and its traceback are above")
endif()

get_filename_component(name ${NOTEBOOK} NAME)
file(READ ${OUTPUT_DIR}/${name} executed)
# A PNG output as nbformat writes it: the MIME key, then base64 of the PNG signature.
string(FIND "${executed}" "\"image/png\": \"iVBORw0KGgo" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${NOTEBOOK}: executed, but no cell output an image/png figure "
                      "(${OUTPUT_DIR}/${name}); with MPLBACKEND=Agg a notebook needs "
                      "`%matplotlib inline` for its figures to become outputs")
endif()
message(STATUS "${NOTEBOOK}: executed, with figures: ${OUTPUT_DIR}/${name}")
