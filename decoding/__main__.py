"""`python -m decoding generate|bench ...`"""

import sys

from decoding.cli.main import main

sys.exit(main(sys.argv[1:]))
