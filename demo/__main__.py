import sys

from headwater.demo.command import main

sys.exit(main())
