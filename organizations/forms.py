from __future__ import annotations

from django import forms

from . import permissions
from .models import Role


class SignInForm(forms.Form):
    username = forms.CharField(label="Username or email", max_length=254)
    password = forms.CharField(widget=forms.PasswordInput, strip=False)


class OrganizationForm(forms.Form):
    name = forms.CharField(max_length=64, help_text="Lowercase letters, digits and hyphens; used in URLs.")
    display_name = forms.CharField(max_length=200, required=False)


class MemberAddForm(forms.Form):
    user = forms.CharField(label="Username or email", max_length=254)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class MemberRoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class NameForm(forms.Form):
    name = forms.CharField(max_length=100)


class CustomRoleForm(forms.Form):
    name = forms.CharField(max_length=100)
    description = forms.CharField(max_length=500, required=False)
    permissions = forms.MultipleChoiceField(
        choices=list(permissions.REGISTRY.items()), widget=forms.CheckboxSelectMultiple, required=False
    )


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100)
    expires_in_days = forms.ChoiceField(
        label="Expires",
        choices=[("7", "in 7 days"), ("30", "in 30 days"), ("90", "in 90 days"), ("365", "in a year"), ("", "never")],
        required=False,
        initial="30",
    )
