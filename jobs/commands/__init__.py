"""Entry points: one module per `cdc-replay` subcommand, each a thin `run(args)` over transforms and I/O."""
