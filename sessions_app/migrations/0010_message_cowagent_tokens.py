from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0009_message_aider_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="cowagent_tokens",
            field=models.PositiveIntegerField(blank=True, default=None, null=True),
        ),
    ]
