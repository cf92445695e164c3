"""`holodesk eval`: score a policy the daemon serves, over its existing RPCs.

command.py is the `holodesk eval` command and lists its subcommands; each lives in
its own package (grounding/ for grounding benchmarks and `eval compare`, tasks/ for
OSWorld-format task suites).
"""
