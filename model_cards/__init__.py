"""Model cards, Hub and leaderboard I/O.

Empty until the model-card issue lands; nothing here pretends to work yet.
"""
