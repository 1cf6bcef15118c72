"""Where an S3 table's options come from, how bad ones are refused, and that no message
carries a secret (issue 29 item 4; the servers themselves: tests/iceberg/test_iceberg_fleet.py)."""

from __future__ import annotations

import pytest

from evolog.iceberg import IcebergInputError
from evolog.iceberg._storage import (
    DEFAULT_REGION,
    check_endpoint,
    check_warehouse,
    is_local,
    redact,
    s3_properties,
)
from evolog.iceberg._upload import object_uri


def test_options_win_over_the_environment_and_credentials_come_from_it() -> None:
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9000",
        "AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9001",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret",
    }
    props = s3_properties(env=env)
    assert props["s3.endpoint"] == "http://127.0.0.1:9001"  # the S3-specific variable first
    assert props["s3.region"] == "eu-west-1"
    assert (props["s3.access-key-id"], props["s3.secret-access-key"]) == ("key", "secret")
    assert "s3.session-token" not in props
    mine = s3_properties("https://s3.example.test/", "ap-south-1", env=env)
    assert (mine["s3.endpoint"], mine["s3.region"]) == ("https://s3.example.test", "ap-south-1")
    # Nothing set: a region all the same (pyiceberg would ask AWS otherwise), no endpoint
    # and no keys.
    bare = s3_properties(env={})
    assert bare["s3.region"] == DEFAULT_REGION
    assert not {"s3.endpoint", "s3.access-key-id", "s3.secret-access-key"} & set(bare)


@pytest.mark.parametrize(
    "endpoint",
    ["ftp://127.0.0.1:1", "127.0.0.1:9000", "http://", "http://h:port", "http://h/path", ""],
)
def test_bad_endpoints_are_refused(endpoint: str) -> None:
    with pytest.raises(IcebergInputError, match=r"expected http\(s\)://HOST\[:PORT\]"):
        check_endpoint(endpoint)
    with pytest.raises(IcebergInputError):
        s3_properties(endpoint or "x", env={})


@pytest.mark.parametrize(
    "warehouse", ["s3://", "s3:///prefix", "s3://Upper/x", "s3://a_b/x", "s3://ab", "s3://b//x"]
)
def test_bad_s3_warehouses_are_refused(warehouse: str) -> None:
    with pytest.raises(IcebergInputError, match=r"expected s3://BUCKET\[/PREFIX\]"):
        check_warehouse(warehouse)


def test_good_warehouses_pass() -> None:
    assert check_warehouse("s3://fleet-bucket/evolog/") == "s3://fleet-bucket/evolog"
    assert check_warehouse("s3://fleet.bucket") == "s3://fleet.bucket"
    assert check_warehouse("/srv/wh") == "/srv/wh"
    assert is_local("/srv/wh") and is_local("file:///srv/wh") and not is_local("s3://b/p")


def test_passwords_are_masked() -> None:
    assert redact("postgresql://u:hunter2@db:5432/x") == "postgresql://u:***@db:5432/x"
    assert redact("postgresql://u@db/x") == "postgresql://u@db/x"
    assert redact("/a/dir") == "/a/dir"


def test_objects_are_named_by_their_hash() -> None:
    from evolog.eventlog.sealed import SegmentInfo

    info = SegmentInfo("seg-1.parquet", 1, 2, 2, 0, 1, 10, "ab" * 32)
    uri = object_uri("s3://b/wh/evolog/events/", info)
    assert uri == f"s3://b/wh/evolog/events/data/segments/{'ab' * 32}/seg-1.parquet"
