import sys

from headwater.harness.demo.command import main

sys.exit(main())
