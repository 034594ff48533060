/* The OCSF class_uid and activity_id every Event carries as a hint (Event.class_uid,
 * Event.activity_id in proto/egret/v1/events.proto; the OTLP sink sends them as attributes).
 * Numbers from the OCSF schema; no includes.
 */
#ifndef EGRET_OCSF_H
#define EGRET_OCSF_H

/* class_uid */
#define OCSF_FILE_SYSTEM_ACTIVITY  1001
#define OCSF_PROCESS_ACTIVITY	   1007
#define OCSF_NETWORK_ACTIVITY	   4001
#define OCSF_DNS_ACTIVITY	   4003
#define OCSF_DEVICE_CONFIG_CHANGE  5019
#define OCSF_APPLICATION_LIFECYCLE 6002

/* activity_id of every class */
#define OCSF_ACTIVITY_OTHER 99

/* activity_id of OCSF_FILE_SYSTEM_ACTIVITY */
#define OCSF_FILE_ACTIVITY_CREATE	1
#define OCSF_FILE_ACTIVITY_READ		2
#define OCSF_FILE_ACTIVITY_UPDATE	3
#define OCSF_FILE_ACTIVITY_DELETE	4
#define OCSF_FILE_ACTIVITY_RENAME	5
#define OCSF_FILE_ACTIVITY_SET_SECURITY 7 /* chmod */

/* activity_id of OCSF_PROCESS_ACTIVITY */
#define OCSF_PROCESS_ACTIVITY_LAUNCH	1
#define OCSF_PROCESS_ACTIVITY_TERMINATE 2

/* activity_id of OCSF_NETWORK_ACTIVITY */
#define OCSF_NET_ACTIVITY_OPEN	 1
#define OCSF_NET_ACTIVITY_CLOSE	 2
#define OCSF_NET_ACTIVITY_REFUSE 5

/* activity_id of OCSF_DNS_ACTIVITY */
#define OCSF_DNS_ACTIVITY_RESPONSE 2

/* activity_id of OCSF_DEVICE_CONFIG_CHANGE: the one egret gives every PolicyChange */
#define OCSF_CONFIG_ACTIVITY_CHANGE 1

/* activity_id of OCSF_APPLICATION_LIFECYCLE */
#define OCSF_APP_ACTIVITY_INSTALL 1
#define OCSF_APP_ACTIVITY_START	  3
#define OCSF_APP_ACTIVITY_STOP	  4
#define OCSF_APP_ACTIVITY_ENABLE  6 /* a sandbox thawed */
#define OCSF_APP_ACTIVITY_DISABLE 7 /* a sandbox frozen */

#endif /* EGRET_OCSF_H */
