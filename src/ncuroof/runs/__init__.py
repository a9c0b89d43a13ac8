"""Analyses of many runs: before/after comparison, fleets of reports and MPI ranks.

Takes several analyses of :mod:`ncuroof.model` (or saved tables); gives the comparison table
(:mod:`.compare`), a fleet's tables from dask workers (:mod:`.fleet`) and the spread of each
kernel over ranks (:mod:`.ranks`).
"""
