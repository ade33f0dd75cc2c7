from __future__ import annotations

from drf_spectacular.generators import SchemaGenerator


def test_the_endpoints_are_documented():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = schema["paths"]

    assert set(paths["/api/v1/quota"]) == {"get"}
    assert set(paths["/api/v1/evaluation/requests"]) == {"get", "post"}
    assert set(paths["/api/v1/evaluation/requests/{request_id}"]) == {"get"}
    assert set(paths["/api/v1/evaluation/redeem"]) == {"post"}
    redeem = paths["/api/v1/evaluation/redeem"]["post"]["responses"]
    assert {"201", "400", "403", "409", "410", "429"} <= set(redeem)
