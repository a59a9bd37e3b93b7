"""Threads written by research_fsm 0.1.0 (main at 7fe1e77): the graph that wrote
them (``graph``) and how they were made (``make``)."""
