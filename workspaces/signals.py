from django.dispatch import Signal

# Sent after a push created a new snapshot (not for an identical push). Arguments: workspace, snapshot.
# Chats follow it to pin or to mark themselves out of date; this app knows nothing about them.
snapshot_pushed = Signal()
