"""Data retention: what each project keeps (:mod:`.policy`) and the job that deletes the rest
(:mod:`.purge`)."""
