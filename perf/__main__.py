"""`python -m tidal.perf`: run the benchmark cases and print the report."""
from .report import main

raise SystemExit(main())
