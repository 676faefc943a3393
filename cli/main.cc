#include "cli/app.h"

int main(int argc, char** argv) { return lemmalab::Main(argc, argv); }
