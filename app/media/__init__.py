"""Media to embed: uploaded images kept on disk, the DB job queue and the embed worker."""
