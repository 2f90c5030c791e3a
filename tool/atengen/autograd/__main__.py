import sys

from atengen.autograd.cli import main

sys.exit(main())
