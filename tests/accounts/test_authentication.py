from rest_framework.test import APIRequestFactory

from accounts.authentication import ApiTokenAuthentication, TokenUser


def test_a_token_caller_is_authenticated_and_not_anonymous(acme, acme_token):
    request = APIRequestFactory().get("/", HTTP_AUTHORIZATION=f"Bearer {acme_token}")
    found = ApiTokenAuthentication().authenticate(request)

    assert found is not None
    user, token = found
    assert isinstance(user, TokenUser)
    assert user.is_authenticated
    assert not user.is_anonymous
    assert user.organization == acme == token.organization
