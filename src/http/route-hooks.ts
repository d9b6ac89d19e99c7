/** A route option's hooks as a list (Fastify takes one hook or several), to add one beside them. */
export const asArray = <T>(h: T | T[] | undefined): T[] => (h === undefined ? [] : Array.isArray(h) ? h : [h]);
