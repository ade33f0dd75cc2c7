from django.contrib import admin

from accounts.models import ApiToken, Membership, Organization


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Organization)
class OrganizationAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)
    inlines = [MembershipInline]


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("name", "organization", "prefix", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("prefix", "digest")
