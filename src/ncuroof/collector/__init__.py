"""Collect: find ``ncu``, check the machine (``doctor``), build the metric list and run ncu.

Takes a program to profile and the collection options; gives the report ncu writes (``.ncu-rep``, or
``.ncu-repz`` from ncu 2026.3) and its ``.ncuroof.json`` record of how it was collected
(:mod:`.ncu`). Imports only the catalog and errors: the first stage of the pipeline.
"""
