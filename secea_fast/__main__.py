"""``python -m secea_fast``: same as the ``secea-fast`` command."""
import sys

from .cli import main

sys.exit(main())
