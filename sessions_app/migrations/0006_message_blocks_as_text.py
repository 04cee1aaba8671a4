"""Message blocks and transcript tool definitions become JSON *text* (``JSONTextField``).

As ``jsonb`` (PostgreSQL) an object's keys came back sorted, shorter first, so a tool
input such as ``{"file_path", "old_string", "new_string"}`` read back in another order
than the agent sent, and strategies that serialise it counted another text. Every row is
kept: the column's type changes in place, each value becoming the text of the JSON it held.

- SQLite: the JSON was text already, in the order imported; values are unchanged.
- PostgreSQL: rows stored before this migration already lost their key order (jsonb kept
  none); they become jsonb's text of the sorted value. Order cannot be rebuilt from the
  database: re-parse the upload (its page's *Re-parse with the current importers*, which
  reads the original bytes kept in ``Upload.data``) to store the agent's order again.
  Rows written after this migration keep it.
"""

from django.db import migrations

import sessions_app.json_text


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0005_message_reference_tables"),
    ]

    operations = [
        migrations.AlterField(
            model_name="message",
            name="blocks",
            field=sessions_app.json_text.JSONTextField(default=list),
        ),
        migrations.AlterField(
            model_name="transcript",
            name="tools",
            field=sessions_app.json_text.JSONTextField(default=list),
        ),
    ]
