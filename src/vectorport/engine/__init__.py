"""What every command shares: endpoints (:mod:`._endpoints`), typed options (:mod:`._options`),
checkpoints (:mod:`._checkpoint`), progress (:mod:`._progress`), the metadata transform
(:mod:`._transform`), the digest scan (:mod:`._digestscan`), the one acknowledged-write pipeline
(:mod:`._pipeline`) and the runner seam (:mod:`._runner`): where a command's tasks run.

Each command owns its package and its stages (:mod:`vectorport.migrate`, :mod:`vectorport.verify`,
:mod:`vectorport.sync`, :mod:`vectorport.snapshot`); none of them is known here.
"""
