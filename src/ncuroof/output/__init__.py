"""What ncuroof writes: its tables as CSV and Parquet (:mod:`.tables`) and the output folder,
written whole or not at all with its manifest (:mod:`.folder`).

Above the parser (the declarations and the readers of saved tables, :mod:`ncuroof.parser.saved`,
which a folder's manifest is read through) and beside the renderers (neither imports the other);
the API writes through it.
"""
