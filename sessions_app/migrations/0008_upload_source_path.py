from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("sessions_app", "0007_transcript_sent_size"),
    ]

    operations = [
        migrations.AddField(
            model_name="upload",
            name="source_path",
            field=models.TextField(blank=True, default=""),
        ),
    ]
