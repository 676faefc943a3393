"""`python3 -m lemmalab RESULTS OUT_DIR`: the same as `python3 -m lemmalab.plots`."""

import sys

from lemmalab.plots import main

sys.exit(main())
