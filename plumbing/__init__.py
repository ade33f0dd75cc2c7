"""The service's shared plumbing, below every app: problem+json errors (`problems`), the SQL
helpers for the few statements written by hand (`sql`), the Celery broker transport (`broker`),
the Redis cache (`cache`), the rate-limit script (`ratelimit`), pagination, DRF serializers built
once (`serializers`), the request-log middleware, gunicorn's worker with a header deadline
(`serving`), the PostgreSQL backend (`postgresql`) and index migrations (`migration_operations`).
`config/` wires them; the apps use them."""
