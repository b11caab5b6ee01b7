"""`python -m bench WHICH [flags]`"""

import sys

from bench.main import main

sys.exit(main(sys.argv[1:]))
