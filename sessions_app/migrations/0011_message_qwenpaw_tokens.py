from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0010_message_cowagent_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="qwenpaw_tokens",
            field=models.PositiveIntegerField(blank=True, default=None, null=True),
        ),
    ]
