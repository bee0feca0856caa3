"""The scheduler: monitors once per interval across processes, and periodic jobs."""
