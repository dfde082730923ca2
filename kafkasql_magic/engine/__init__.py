"""The query engine: `analysis` turns a statement into an immutable plan (no Spark), `build`
turns a plan into Spark frames (once). See ARCHITECTURE.md."""
