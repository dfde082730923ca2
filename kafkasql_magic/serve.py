"""Headless mode, like ksqlDB's: run persistent queries outside any notebook until stopped.

    python -m kafkasql_magic serve --bootstrap-servers HOST:PORT [--service-id ID]
        [--queries-file app.sql] [--master URL] [--schema-registry URL] [--state-dir DIR]

With `--queries-file` the file's statements run once (as ksqlDB's headless queries file);
otherwise the service's command topic is replayed. Ctrl-C (or SIGTERM) stops the queries
cleanly, leaving their checkpoints for the next start.
"""

from __future__ import annotations

import argparse
import signal
import threading


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m kafkasql_magic serve", description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--schema-registry", default=None)
    p.add_argument("--service-id", default="default_")
    p.add_argument("--queries-file", default=None)
    p.add_argument("--master", default=None, help="Spark master URL (default local[2])")
    p.add_argument("--state-dir", default=None)
    return p


def serve(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    import kafkasql_magic as ks
    from kafkasql_magic.sparkenv import local_spark

    spark = local_spark(args.master)
    if args.queries_file:
        session = ks.Session(args.bootstrap_servers, schema_registry_url=args.schema_registry, spark=spark,
                             state_dir=args.state_dir)
        with open(args.queries_file, encoding="utf-8") as f:
            session.sql(f.read())
    else:
        session = ks.connect(args.bootstrap_servers, schema_registry_url=args.schema_registry, spark=spark,
                             state_dir=args.state_dir, service_id=args.service_id)
    print(f"Running {len(session.persistent.queries)} persistent quer"
          f"{'y' if len(session.persistent.queries) == 1 else 'ies'}: {', '.join(session.persistent.queries)}",
          flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    try:
        while not stop.wait(1.0) and session.persistent.queries:
            pass
    except KeyboardInterrupt:
        pass
    finally:
        session.stop()
        print("Stopped.", flush=True)
    return 0
