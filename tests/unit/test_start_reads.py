"""A source's first offsets (START OFFSET / START TIMESTAMP) in the reads a query makes."""

from kafkasql_magic.engine.analysis.seek import Seek
from kafkasql_magic.kafka import reads


def test_bounded_and_push_reads_start_at_a_sources_first_offsets():
    start = {0: 2, 1: 0}
    bounded = reads.bounded("b:1", "t", start=start)
    assert (bounded.options()["startingOffsets"], bounded.options()["endingOffsets"]) == ('{"0": 2, "1": 0}', "latest")
    push = reads.push("b:1", "t", reset="latest", seek=Seek(), max_per_trigger=10, start=start)
    assert push.starting == start  # the source's start wins over auto.offset.reset
    assert reads.push("b:1", "t", reset="latest", seek=Seek(), max_per_trigger=10).starting == "latest"
    assert reads.bounded("b:1", "t").starting == "earliest"
