from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0011_message_qwenpaw_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="message",
            name="qwenpaw_formatted",
            field=models.PositiveIntegerField(blank=True, default=None, null=True),
        ),
    ]
