"""Upload form: many files at once, an optional forced format."""

from __future__ import annotations

from typing import Any

from django import forms

from ctxlab.engine import importers


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """A FileField that accepts a list of files (Django docs' recipe)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput(attrs={"multiple": True}))
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        # No FileField checks: an empty or odd file is still imported on its own and
        # reported by the importer with a located reason, never refused by the form.
        if not data:
            return []
        items = data if isinstance(data, (list, tuple)) else [data]
        return [item for item in items if hasattr(item, "read")]


def format_choices() -> list[tuple[str, str]]:
    choices = [("", "Detect automatically")]
    for fmt, module in importers.IMPORTERS.items():
        choices.append((fmt, f"{getattr(module, 'LABEL', fmt)} ({fmt})"))
    return choices


class UploadForm(forms.Form):
    # The metaclass moves declared fields into base_fields, so ``form.files`` stays the
    # uploaded-files dict the stubs describe; only the class attribute is a field.
    files = MultipleFileField(  # type: ignore[assignment]
        required=False,  # oversize files are dropped by the upload handler and reported
        help_text="One or many transcript files; each is imported on its own.",
    )
    format = forms.ChoiceField(choices=(), required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        format_field = self.fields["format"]
        assert isinstance(format_field, forms.ChoiceField)
        format_field.choices = format_choices()
