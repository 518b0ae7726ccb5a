import sys

from asymptotics.cli.curve import main

sys.exit(main())
