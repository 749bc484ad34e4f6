"""One module per `logrepair` subcommand: `add_parser(subparsers)` registers it and sets
`run=<function(args) -> int>` as the parser default."""
