-- Option Sets: app-owned lists synced by the customer's system, read by SDKs.
-- Items are versioned rows (valid_from / valid_to set versions) so a read pinned to a
-- version sees exactly that version's content, however many syncs commit meanwhile.

-- unaccent() is only STABLE (its dictionary could change); pinning the dictionary makes the fold
-- safe to declare IMMUTABLE, which an index over it requires. Where the role may create C functions
-- (superuser, e.g. the embedded server) an IMMUTABLE C entry point to unaccent's own code lets the
-- SQL wrapper be inlined (several times cheaper per row); elsewhere a plain SQL wrapper is used.
DO $fold$
BEGIN
  BEGIN
    CREATE OR REPLACE FUNCTION option_unaccent(regdictionary, text) RETURNS text
      LANGUAGE c IMMUTABLE PARALLEL SAFE STRICT AS '$libdir/unaccent', 'unaccent_dict';
    CREATE OR REPLACE FUNCTION option_fold(t text) RETURNS text
      LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
      AS $$ SELECT lower(option_unaccent(regdictionary 'public.unaccent', t)) $$;
  EXCEPTION WHEN insufficient_privilege THEN
    CREATE OR REPLACE FUNCTION option_fold(t text) RETURNS text
      LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT
      AS $$ SELECT lower(public.unaccent('public.unaccent'::regdictionary, t)) $$;
  END;
END
$fold$;

CREATE TABLE option_sets (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  set_id text NOT NULL,
  version integer NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (app_id, set_id)
);

CREATE SEQUENCE option_item_seq;

CREATE TABLE option_items (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  set_id text NOT NULL,
  -- Internal identity of an item across its versions.
  item_id bigint NOT NULL,
  -- The customer's optional stable key (`id` on the wire).
  ext_id text,
  value text NOT NULL,
  label text NOT NULL,
  sort_order double precision NOT NULL DEFAULT 0,
  option_data jsonb,
  archived boolean NOT NULL DEFAULT false,
  -- The sync that wrote this row; with option_item_touches it tells a final replace after
  -- several merges which items those merges sent.
  last_sent_version integer NOT NULL,
  -- Visible to reads at version v when valid_from <= v AND (valid_to IS NULL OR valid_to > v).
  valid_from integer NOT NULL,
  valid_to integer,
  -- option_fold(value || ' ' || label), written with the row (a plain column, so closing a row,
  -- which only sets valid_to, does not fold the text again).
  search_text text NOT NULL,
  PRIMARY KEY (app_id, set_id, item_id, valid_from)
);

-- Current rows: one per item, values unique (archived items keep theirs so answers still resolve).
CREATE UNIQUE INDEX option_items_current_item ON option_items (app_id, set_id, item_id) WHERE valid_to IS NULL;
CREATE UNIQUE INDEX option_items_current_value ON option_items (app_id, set_id, value) WHERE valid_to IS NULL;
CREATE UNIQUE INDEX option_items_current_ext ON option_items (app_id, set_id, ext_id) WHERE valid_to IS NULL AND ext_id IS NOT NULL;
-- Keyset paging in read order.
CREATE INDEX option_items_order ON option_items (app_id, set_id, sort_order, value);
-- Accent- and case-insensitive substring search over the current visible rows only: closing or
-- archiving a row then adds no trigram entries (the expensive part of a sync). Searches of an older
-- version (a cursor taken before a sync) walk the order index instead. Syncs add to the GIN pending
-- list (cheap); the service flushes it (gin_clean_pending_list) shortly after a burst of syncs.
CREATE INDEX option_items_search ON option_items USING gin (search_text gin_trgm_ops)
  WHERE valid_to IS NULL AND NOT archived;

-- Items a sync named but did not change (no new row): the last such sync's version. Kept apart
-- from option_items so a no-op sync of 5,000 rows does not rewrite 5,000 wide, GIN-indexed rows.
CREATE TABLE option_item_touches (
  tenant_id uuid NOT NULL,
  app_id uuid NOT NULL,
  set_id text NOT NULL,
  item_id bigint NOT NULL,
  version integer NOT NULL,
  PRIMARY KEY (app_id, set_id, item_id)
);
