/** Row shapes of option-set items shared by the option-set store and its search index. */

/** One item of a page of a set version, in read order. */
export interface PageRow {
  id: string | null;
  value: string;
  label: string;
  sort_order: number;
  option_data: Record<string, unknown> | null;
}

/** One visible row of a set version as the index loads it (in read order). */
export interface IndexRow extends PageRow {
  /** option_fold(value || ' ' || label), as stored: the index never folds item text itself. */
  search_text: string;
  /** Stored size of option_data (pg_column_size): its share of the memory estimate. */
  data_bytes?: number | null;
}
