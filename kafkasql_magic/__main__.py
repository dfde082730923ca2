"""`python -m kafkasql_magic serve ...`: see `kafkasql_magic.serve`."""

import sys

from .serve import serve

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] != "serve":
        print("usage: python -m kafkasql_magic serve --bootstrap-servers HOST:PORT [--queries-file app.sql] "
              "[--master URL] [--service-id ID] [--schema-registry URL] [--state-dir DIR]", file=sys.stderr)
        sys.exit(2)
    sys.exit(serve(sys.argv[2:]))
