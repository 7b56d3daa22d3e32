"""The CoREB builder, one module per step: the official layout (:mod:`.layout`), records
(:mod:`.records`), reading a release (:mod:`.release`), qrels (:mod:`.qrels`), rows
(:mod:`.rows`), statistics and card data (:mod:`.statistics`), the build (:mod:`.build`), the
MTEB export (:mod:`.mteb`) and the data of one subtask for evaluation (:mod:`.subtask_data`)."""
