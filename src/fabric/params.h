// The parameters of the fabric's models, each declared once beside the struct it sets
// (core/params.h): key, kind and unit, range, help. Defaults are the structs' own; the
// DCQCN presets are DcqcnPreset values (dcqcn.h). Keys are relative to the struct; a
// scenario nests them under its own prefixes ("nic.", "switch.", "topology.").
//
//   NicConfig nic;
//   const auto* f = nic_table().find("roce_rp.rpg_ai_rate");
//   f->set(nic, params::parse(f->spec, "40"));   // nic.dcqcn.rpg_ai_rate = Mbps(40)
#pragma once

#include "core/params.h"
#include "fabric/cc/dcqcn.h"
#include "fabric/host.h"
#include "fabric/reorder_box.h"
#include "fabric/resequencer.h"
#include "fabric/switch.h"
#include "fabric/topology.h"

namespace fabriclab::fabric {

// The reaction point, in the sysfs names and units of ecn/roce_rp/* (us, Mb/s, /1024).
const params::Table<DcqcnParams>& dcqcn_table();
// nic.dctcp.*, nic.timely.*, nic.swift.*, nic.hpcc.*: those policies' parameters (cc/dctcp.h, ...).
const params::Table<DctcpParams>& dctcp_table();
const params::Table<HpccParams>& hpcc_table();
const params::Table<TimelyParams>& timely_table();
const params::Table<SwiftParams>& swift_table();
// nic.irn.*: IRN's selective repeat (nic.transport = "irn").
const params::Table<IrnParams>& irn_table();
// nic.nscc.*: UET's NSCC (cc/nscc.h).
const params::Table<NsccParams>& nscc_table();
// nic.uet.*: the Ultra Ethernet transport (nic.transport = "uet").
const params::Table<UetParams>& uet_table();
// The notification point, ecn/roce_np/*.
const params::Table<CnpParams>& cnp_table();
// A NIC: transport, receive buffer, congestion control; its DCQCN values under
// "roce_rp." and "roce_np.", and "roce_rp.preset", which sets both from a DcqcnPreset.
const params::Table<NicConfig>& nic_table();
// PFC, as switches and NICs both use it (SwitchConfig::pfc).
const params::Table<PfcConfig>& pfc_table();
// A switch: buffer and MMU, PFC and its watchdog, scheduling, WRED/ECN, load balancing.
const params::Table<SwitchConfig>& switch_table();
// The network's shape and links.
const params::Table<TopologySpec>& topology_table();
// wire.*: the frame format the network counts (WireFormat).
const params::Table<WireFormat>& wire_table();
inline constexpr params::EnumNames<WireRounding, 3> kWireRoundingNames{
    {{WireRounding::ps_up, "ps_up"}, {WireRounding::ns_down, "ns_down"}, {WireRounding::ns_nearest, "ns_nearest"}}};
// A reorder box's probabilities and holds (its rules are text, parsed when it is built).
const params::Table<ImpairmentConfig>& impairment_table();
const params::Table<ResequencerConfig>& resequencer_table();

// A list of priorities ("3,4") as a bit mask; InputError names the item that is not 0..7.
std::uint8_t priority_mask(const std::string& list);
// The mask's priorities in increasing order, comma-separated ("3,4"; "" for none).
std::string priority_list_text(std::uint8_t mask);

}  // namespace fabriclab::fabric
