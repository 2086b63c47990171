from ssdbench.cli import main

raise SystemExit(main())
