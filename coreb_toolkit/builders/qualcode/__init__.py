"""The QualCode / MC-QualCode builder: options (:mod:`.options`), candidates (:mod:`.data`),
pairs (:mod:`.pairs`), MC-QualCode triplets (:mod:`.mc`), preparation (:mod:`.prepare`), the
build report (:mod:`.report`), rows (:mod:`.rows`) and the build (:mod:`.build`)."""
