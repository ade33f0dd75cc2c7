"""The accounts endpoints are in the OpenAPI schema, under their published names."""

from __future__ import annotations

from drf_spectacular.generators import SchemaGenerator


def test_the_accounts_endpoints_are_documented(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    paths = schema["paths"]

    expected = {
        "/api/v1/me": {"get"},
        "/api/v1/tokens": {"get", "post"},
        "/api/v1/tokens/{token_id}": {"get", "delete"},
        "/api/v1/organization/members": {"get", "post"},
        "/api/v1/organization/members/{member_id}": {"get", "patch", "delete"},
        "/api/v1/organization/ownership": {"post"},
        "/api/v1/organization/invitations": {"get", "post"},
        "/api/v1/organization/invitations/{invitation_id}": {"delete"},
        "/api/v1/organization/domains": {"get", "post"},
        "/api/v1/organization/domains/{domain_id}": {"delete"},
    }
    for path, methods in expected.items():
        assert set(paths[path]) >= methods, path
    created = paths["/api/v1/tokens"]["post"]["responses"]["201"]
    assert created["content"]["application/json"]["schema"]["$ref"].endswith("TokenCreated")
    assert "secret" in schema["components"]["schemas"]["TokenCreated"]["properties"]
