from dronecats.cli import main

raise SystemExit(main())
