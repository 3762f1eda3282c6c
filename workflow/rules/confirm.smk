# The sealed confirmation (see lockfiles/protocol.json and scripts/confirm.py). Nothing here is
# an input of the development DAG.
