from django import forms


class WorkspaceForm(forms.Form):
    organization = forms.ChoiceField(choices=[])
    name = forms.CharField(max_length=64)

    def __init__(self, *args, organizations=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["organization"].choices = [(o.name, o.display_name) for o in organizations]
