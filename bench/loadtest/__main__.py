import sys

from bench.loadtest.run import main

sys.exit(main())
