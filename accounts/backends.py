"""Sign-in with the e-mail address, in any case, as the username."""

from __future__ import annotations

from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.models import User
from django.db.models import Q
from django.http import HttpRequest


class EmailBackend(ModelBackend):
    """Accounts made at sign-up have their e-mail as username; older ones (createsuperuser)
    may not, so the username and the e-mail are both looked up, case-insensitively."""

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: object,  # as ModelBackend.authenticate declares them; none is read
    ) -> User | None:
        if username is None or password is None:
            return None
        login = username.strip()
        candidates = list(
            User.objects.filter(Q(username__iexact=login) | Q(email__iexact=login)).order_by("id")[
                :5
            ]
        )
        if not candidates:
            # Hash anyway, so the answer takes as long whether the account exists or not.
            User().set_password(password)
            return None
        # An exact username first; then the accounts sharing that e-mail (older ones may).
        candidates.sort(key=lambda user: user.username.lower() != login.lower())
        for user in candidates:
            if user.check_password(password) and self.user_can_authenticate(user):
                return user
        return None
