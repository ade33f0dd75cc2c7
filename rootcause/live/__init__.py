"""Live jobs: `rootcause run` and `rootcause watch` diagnose a job while it runs.

`buffer` keeps the job's output in bounded memory and tells progress from a redrawn bar,
`monitor` decides when to diagnose (on new error-ish lines, debounced) and when the job stalled,
`runner` runs the command and passes its output through, `follow` tails log files another
process writes, `procs` reads the process tree from /proc and takes `py-spy` dumps, `bundle`
collects a hang bundle and hands it to the hang analyser (the one adapter, `diagnose_bundle`),
and `commands` holds the two typer commands. Plain Python: no Django, no psutil, no torch.
"""
