"""What a pandas keyed step is handed, so that it hands back exactly what it got (`exact_spark.py`)."""
