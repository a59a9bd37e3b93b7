"""The stores' codec: how a checkpoint becomes bytes and comes back, shared by the file
store (``file/``) and PostgreSQL (``postgres/``); private to ``research_fsm.stores``.

``logformat`` (a checkpoint's body, the file store's lines and segment lists,
versioned), ``jsonplan`` (a state model written as JSON that loads back equal) and
``serialize`` (the value that makes a state unserialisable, for the error). A new
store that keeps bytes encodes them here rather than with a format of its own.
"""
