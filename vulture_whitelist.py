"""Names vulture cannot see being used (make lint runs vulture with this file).

Only what a framework, a template or the database reads: Django settings are read by name,
templates read attributes, Daphne, Channels and Django call methods and read attributes by
convention, record fields are serialised whole. Conventions shared by every app (Meta,
list_display, urlpatterns, add_arguments, clean_*, pytest fixtures...) are ``ignore_names``
and ``ignore_decorators`` in pyproject.toml. Dead code does not go here: delete it.
"""

from __future__ import annotations

# ctxlab/settings.py is not scanned (Django reads every upper-case name there), so the
# helpers it calls look unused.
_.env_int  # ctxlab/envconfig.py
_.env_list  # ctxlab/envconfig.py
_.sqlite_database  # ctxlab/envconfig.py
_.site_dir  # ctxlab/paths.py

# The import system calls a module's __getattr__ for a name it lacks (PEP 562).
_.__getattr__  # ctxlab/engine/__init__.py: the engine's lazy names

# Daphne/Twisted, Channels, kombu and Django: signatures and attributes they define.
_.failure  # ctxlab/serving/bounded_server.py: Twisted errback argument
_.factory  # ctxlab/serving/bounded_server.py: Daphne's protocol factory argument
_.requestFactory  # ctxlab/serving/bounded_server.py: Twisted's HTTPChannel attribute
_.server_cls  # ctxlab/management/commands/serve.py: Daphne's runserver hook
_.polling_interval  # ctxlab/celery.py: kombu's SQLAlchemy transport
_.sender  # sessions_app/models.py: Django signal receiver argument
_.file_size  # sessions_app/uploads.py: Django upload handler argument
_.max_value  # replay_app/runs/forms.py: Django form field attribute
_.openai_endpoint  # replay_app/runs/forms.py: read by runs/run_new.html
_.openai_model  # replay_app/runs/forms.py, suites_app/forms.py: form fields (cleaned_data)
_.output_field  # replay_app/runs/run_size.py: Django Func attribute
_.as_sqlite  # replay_app/runs/run_size.py: Django's per-vendor SQL hook
_.value_to_string  # sessions_app/json_text.py: Django serialisers (dumpdata) call it
_.suite_progress  # suites_app/consumers.py: Channels handler of "suite.progress" messages
_.transcript_grown  # sessions_app/consumers.py: Channels handler of "transcript.grown" messages
_.single_thread_executor  # tests/browser/conftest.py: asgiref's sync_to_async setting
_.my_total  # tests/engine/strategies/test_strategy_run_state.py: the write that must fail

# Record fields: stored or serialised whole (dataclasses.asdict, model fields).
_.p50  # ctxlab/engine/cost/calibration.py
_.lost_read_cost  # ctxlab/engine/cost/ledger.py
_.created_step  # ctxlab/engine/core/context.py: Pending
_.generator  # judge_app/models.py
_.claude_finished_at  # judge_app/models.py

# Read by templates.
_.warning_total  # sessions_app/models.py: transcript_list.html
_.single_transcript_id  # sessions_app/upload_pages.py: transcript_list.html
_.titles_more  # sessions_app/upload_pages.py: transcript_list.html
_.prev_step  # replay_app/compare/compare_steps.py, steps/at_step.py: compare_step.html
_.next_step  # idem
_.diffable  # replay_app/steps/at_step.py: _step_context.html
_.overall  # replay_app/compare/survival_table.py: _survival.html
_.findings_shown  # replay_app/compare/survival_table.py: _survival.html
_.drift_shown  # replay_app/compare/survival_table.py: _survival.html
_.param_fields  # replay_app/configs/forms.py: strategy_form.html
_.input_name  # replay_app/configs/stage_builder.py: _stage_builder.html
_.is_retryable  # replay_app/models: run_detail.html
_.messages_text  # replay_app/runs/pages/runpage.py: _events.html
_.latest_events  # replay_app/runs/progress.py: _run_live.html
_.filter_format  # suites_app/forms.py: suite_new.html
_.filter_min_messages  # idem
_.filter_max_messages  # idem
_.filter_text  # idem
_.grid_base  # idem
_.eta_seconds  # suites_app/progress.py: _suite_live.html
_.default_rows  # suites_app/results.py: suite_detail.html
_.process_request  # ctxlab/serving/page_server.py: socketserver calls it for each accepted connection
_._session_key  # ctxlab/session_rows.py: Django's session store reads it (a new key when saved)
_.request_queue_size  # ctxlab/serving/page_server.py: socketserver's listen backlog
_.kind_label  # replay_app/compare/originals.py: runs/_originals.html, compare/_originals.html
_.fact_rows  # sessions_app/session_now_page.py: session_now.html
_.ws_path  # idem
_.previous_url  # idem
_.not_reproduced  # replay_app/compare/originals.py: compare/_originals.html
_.lineLengthExceeded  # ctxlab/serving/bounded_server.py: Twisted's line parser calls it (414/431)
_._parsePOSTFormSubmission  # ctxlab/serving/bounded_server.py: Twisted reads it (form bodies unparsed)
_.temporary_file_path  # sessions_app/uploads.py: Django's TemporaryUploadedFile API
_.UploadTempFileHandler  # sessions_app/uploads.py: FILE_UPLOAD_HANDLERS in settings
_.upload_interrupted  # sessions_app/uploads.py: Django's upload handler API

# tests/conformance/test_deepagents_conformance.py: LangChain calls its fake chat model's
# hooks, and deepagents its fake backend's, by name.
_._llm_type
_._get_ls_params
_._generate
_.run_manager
_.download_files
