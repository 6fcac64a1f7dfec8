import sys

from edgec.cli import main

sys.exit(main())
