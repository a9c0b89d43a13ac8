"""The roofline model of one run: from the raw table to the launch, point, dot and kernel tables.

Takes the raw table of :mod:`ncuroof.parser` and the catalog; gives every number the renderers
show, in the tidy tables of :mod:`ncuroof.schema`, in pipeline order:

- :mod:`.formulas`: FLOPs per precision, bytes per level, rates, report roofs, points;
- :mod:`.roofs`: datasheet, user and achievable roofs where the report has none, each roof's
  source as data, the long roof table;
- :mod:`.expect`: useful work from ``--expect`` sizes;
- :mod:`.classify`: bound, and the one binding-point rule;
- :mod:`.speed_of_light`: time at the roof (roofline and unit bounds), hot pipe;
- :mod:`.instruction_roofline`: warp instructions per transaction, the issue roof;
- :mod:`.summary`: the one kernel identity and aggregation, kernel dots and summary;
- :mod:`.production`: a production timeline joined by kernel identity (``--timeline``);
- :mod:`.phases`: one dot per NVTX range or PyTorch operator;
- :mod:`.diagnose`: verdicts, advice, flags, what-if;
- :mod:`.analysis`: all of it once, with its options (:func:`.analysis.build`).
"""
